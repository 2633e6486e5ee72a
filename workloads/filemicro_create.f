# fsbench: filemicro_create - grow an empty file by 1024 appends of 1 MiB, then stop
#
# File-creation micro-benchmark: a file that starts empty is extended with
# fixed-size appends of $iosize until $count appends have been done in all
# (1 GiB by default). $sync=true opens the file with O_DSYNC, making every
# append synchronous. The run ends when the count is reached (or after
# $runtime seconds).
#
# Scale with -s: count, iosize, nthreads, sync, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $count=1024
set $iosize=1m
set $nthreads=1
set $sync=false
set $runtime=60

set mode quit alldone

define file name=largefile, path=$dir, size=0, prealloc

define process name=filecreater, instances=1
{
  thread name=filecreaterthread, memsize=10m, instances=$nthreads
  {
    flowop appendfile    name=append-file, filename=largefile, dsync=$sync, iosize=$iosize
    flowop finishoncount name=finish, value=$count
  }
}

run $runtime
