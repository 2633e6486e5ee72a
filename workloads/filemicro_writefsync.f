# fsbench: filemicro_writefsync - write a 1 GiB file from empty in 8 KiB appends, fsync every 8 MiB
#
# One thread extends an initially empty file with $writeiters appends of
# $iosize, then fsyncs it, and repeats; the run stops after $fsynccount
# fsyncs (1 GiB written with the defaults) or after $runtime seconds.
# Filebench's file sets $fsynccount but hard-codes the same value, 128, in
# the finish flowop; here the finish flowop uses $fsynccount so that -s
# fsynccount=N takes effect.
#
# Scale with -s: iosize, writeiters, fsynccount, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $iosize=8k
set $writeiters=1024
set $fsynccount=128
set $runtime=60

set mode quit firstdone

define file name=bigfile, path=$dir, size=0, prealloc

define process name=filewriter, instances=1
{
  thread name=filewriterthread, memsize=10m, instances=1
  {
    flowop appendfile    name=append-file, filename=bigfile, iosize=$iosize,
        iters=$writeiters
    flowop fsync         name=sync-file
    flowop finishoncount name=finish, value=$fsynccount, target=sync-file
  }
}

run $runtime
