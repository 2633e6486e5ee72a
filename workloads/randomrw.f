# fsbench: randomrw - concurrent random 8 KiB reads and writes on one large file
#
# One file of $filesize bytes (kept if it already exists), laid out before
# the run. $nthreads reader threads and $nthreads writer threads work on it
# at the same time, each doing $iosize I/O at random iosize-aligned offsets
# within the first $workingset bytes (0 = the whole file). $directio=1 opens
# the file with O_DIRECT.
#
# Scale with -s: filesize, iosize, nthreads, workingset, directio, memsize,
# runtime.
#
# $memsize is 0: one I/O buffer per thread, as a plain pread loop uses.
# -s memsize=5m restores Filebench's placement (docs/filebench-compat.md).
#
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $filesize=5g
set $iosize=8k
set $nthreads=1
set $workingset=0
set $directio=0
set $memsize=0
set $runtime=10

define file name=largefile1, path=$dir, size=$filesize, prealloc, reuse, paralloc

define process name=rand-rw, instances=1
{
  thread name=rand-r-thread, memsize=$memsize, instances=$nthreads
  {
    flowop read name=rand-read1, filename=largefile1, iosize=$iosize, random,
        workingset=$workingset, directio=$directio
  }
  thread name=rand-w-thread, memsize=$memsize, instances=$nthreads
  {
    flowop write name=rand-write1, filename=largefile1, iosize=$iosize, random,
        workingset=$workingset, directio=$directio
  }
}

run $runtime
