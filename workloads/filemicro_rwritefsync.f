# fsbench: filemicro_rwritefsync - 16Ki random 8 KiB overwrites in a 1 GiB file, then one fsync
#
# One file of $filesize bytes. A thread writes $iters blocks of $iosize at
# random aligned offsets (128 MiB by default) and then fsyncs the file, so
# the fsync has to flush all of them. The finish check ends the run once
# $count I/O operations have been done, which with the default of 1 means
# after the first loop.
# Filebench's file asked for a cold cache after layout with cached=false,
# which Filebench 1.5 no longer accepts; it is left out here. For a
# cold-cache run drop the page cache between layout and run yourself.
#
# Scale with -s: count, filesize, iosize, iters, nthreads, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $count=1
set $filesize=1g
set $iosize=8k
set $iters=16384
set $nthreads=1
set $runtime=60

set mode quit alldone

define file name=bigfile, path=$dir, size=$filesize, prealloc

define process name=filewriter, instances=1
{
  thread name=filewriterthread, memsize=10m, instances=$nthreads
  {
    flowop write         name=write-file, filename=bigfile, random, iosize=$iosize,
        iters=$iters
    flowop fsync         name=sync-file
    flowop finishoncount name=finish, value=$count
  }
}

run $runtime
