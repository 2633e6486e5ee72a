# fsbench: filemicro_rread - random 2 KiB reads from a 1 GiB file until 128 MiB have been read
#
# One file of $filesize bytes (kept if it already exists). A thread reads
# $iosize blocks at random aligned offsets, $iters reads per loop, and the
# run stops once more than $bytes have been read in all.
# Filebench's file asked for a cold cache after layout with cached=false,
# which Filebench 1.5 no longer accepts; it is left out here. For a
# cold-cache run drop the page cache between layout and run yourself.
#
# Scale with -s: bytes, filesize, iosize, iters, nthreads, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $bytes=128m
set $filesize=1g
set $iosize=2k
set $iters=1
set $nthreads=1
set $runtime=60

set mode quit alldone

define file name=bigfile1, path=$dir, size=$filesize, prealloc, reuse

define process name=filereader, instances=1
{
  thread name=filereaderthread, memsize=10m, instances=$nthreads
  {
    flowop read          name=read-file, filename=bigfile1, random, iosize=$iosize,
        iters=$iters
    flowop finishonbytes name=finish, value=$bytes
  }
}

run $runtime
