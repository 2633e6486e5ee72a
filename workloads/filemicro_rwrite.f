# fsbench: filemicro_rwrite - random 2 KiB overwrites in a 1 GiB file until 128 MiB have been written
#
# One file of $filesize bytes (kept if it already exists). A thread writes
# $iosize blocks at random aligned offsets, $iters writes per loop, without
# fsync, and the run stops once more than $bytes have been written in all.
# $sync=true opens the file with O_DSYNC.
# Filebench's file asked for a cold cache after layout with cached=false,
# which Filebench 1.5 no longer accepts; it is left out here. For a
# cold-cache run drop the page cache between layout and run yourself.
#
# Scale with -s: bytes, filesize, iosize, iters, nthreads, sync, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $bytes=128m
set $filesize=1g
set $iosize=2k
set $iters=1
set $nthreads=1
set $sync=false
set $runtime=60

set mode quit alldone

define file name=bigfile1, path=$dir, size=$filesize, prealloc, reuse

define process name=filewriter, instances=1
{
  thread name=filewriterthread, memsize=10m, instances=$nthreads
  {
    flowop write         name=write-file, filename=bigfile1, random, dsync=$sync,
        iosize=$iosize, iters=$iters
    flowop finishonbytes name=finish, value=$bytes
  }
}

run $runtime
