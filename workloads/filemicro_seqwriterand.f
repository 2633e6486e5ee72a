# fsbench: filemicro_seqwriterand - grow an empty file by 128Ki appends of random size below 8 KiB
#
# A file that starts empty is opened and extended by $count appends of
# random size (uniform, up to $iosize - 1 bytes, about half of $iosize on
# average), then closed; the run stops after that one loop. $sync=true
# opens the file with O_DSYNC.
# Filebench's file asked for a cold cache after layout with cached=false,
# which Filebench 1.5 no longer accepts; it is left out here. For a
# cold-cache run drop the page cache between layout and run yourself.
#
# Scale with -s: count, iosize, nthreads, sync, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $count=128k
set $iosize=8k
set $nthreads=1
set $sync=false
set $runtime=60

set mode quit alldone

define file name=bigfile, path=$dir, size=0, prealloc

define process name=filewriter, instances=1
{
  thread name=filewriterthread, memsize=10m, instances=$nthreads
  {
    flowop openfile       name=open-file, filename=bigfile, fd=1
    flowop appendfilerand name=appendrand-file, dsync=$sync, iosize=$iosize, fd=1,
        iters=$count
    flowop closefile      name=close, fd=1
    flowop finishoncount  name=finish, value=1
  }
}

run $runtime
