# fsbench: filemicro_createrand - grow an empty file by random-size appends with periodic fsync until 1 GiB
#
# A file that starts empty is extended by appends of random size (uniform,
# up to $iosize - 1 bytes, about half of $iosize on average); after every
# $iters appends the file is fsynced. The run stops when $bytes have been
# written in all. $sync=true opens the file with O_DSYNC.
#
# Scale with -s: bytes, iosize, iters, nthreads, sync, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $bytes=1g
set $iosize=1m
set $iters=10
set $nthreads=1
set $sync=false
set $runtime=60

set mode quit alldone

define file name=largefile, path=$dir, size=0, prealloc

define process name=filecreater, instances=1
{
  thread name=filecreaterthread, memsize=10m, instances=$nthreads
  {
    flowop appendfilerand name=append-file, filename=largefile, dsync=$sync,
        iosize=$iosize, iters=$iters
    flowop fsync          name=sync
    flowop finishonbytes  name=finish, value=$bytes
  }
}

run $runtime
