# fsbench: randomwrite - random 8 KiB overwrites in one large file
#
# One file of $filesize bytes (kept if it already exists), laid out before
# the run. Each of $nthreads threads writes $iosize blocks at random
# iosize-aligned offsets within the first $workingset bytes (0 = the whole
# file), without fsync. $directio=1 opens the file with O_DIRECT.
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

define process name=rand-write, instances=1
{
  thread name=rand-thread, memsize=$memsize, instances=$nthreads
  {
    flowop write name=rand-write1, filename=largefile1, iosize=$iosize, random,
        workingset=$workingset, directio=$directio
  }
}

run $runtime
