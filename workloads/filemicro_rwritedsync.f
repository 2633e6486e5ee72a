# fsbench: filemicro_rwritedsync - random 2 KiB O_DSYNC overwrites in a 1 GiB file, 64Ki writes
#
# One file of $filesize bytes (kept if it already exists), opened with
# O_DSYNC so that every write is stable before it returns. A thread writes
# $iosize blocks at random aligned offsets, $iters writes per loop; the run
# stops once $count writes have been done in all.
#
# Scale with -s: count, filesize, iosize, iters, nthreads, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $count=65536
set $filesize=1g
set $iosize=2k
set $iters=1
set $nthreads=1
set $runtime=60

set mode quit alldone

define file name=bigfile, path=$dir, size=$filesize, prealloc, reuse

define process name=filewriter, instances=1
{
  thread name=filewriterthread, memsize=10m, instances=$nthreads
  {
    flowop write         name=write-file, filename=bigfile, random, dsync,
        iosize=$iosize, iters=$iters
    flowop finishoncount name=finish, value=$count
  }
}

run $runtime
