# fsbench: filemicro_seqwrite - write a 1 GiB file from empty with 1024 sequential 1 MiB appends
#
# A file that starts empty is extended by $count appends of $iosize (one
# loop of the thread), without fsync; then the run stops. $sync=true opens
# the file with O_DSYNC.
# Filebench's file asked for a cold cache after layout with cached=false,
# which Filebench 1.5 no longer accepts; it is left out here. For a
# cold-cache run drop the page cache between layout and run yourself.
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

define file name=bigfile, path=$dir, size=0, prealloc

define process name=filewriter, instances=1
{
  thread name=filewriterthread, memsize=10m, instances=$nthreads
  {
    flowop appendfile    name=write-file, dsync=$sync, filename=bigfile, iosize=$iosize,
        iters=$count
    flowop finishoncount name=finish, value=1
  }
}

run $runtime
