# fsbench: fivestreamwrite - five concurrent streams of sequential 1 MiB writes, one per file
#
# Five files of $filesize bytes (kept if they already exist), laid out
# before the run. Five thread groups of $nthreads threads (one by default)
# each write their own file sequentially in $iosize chunks from the start,
# without fsync; once past $filesize the files keep growing. Shows how the
# file system allocates space for several interleaved sequential streams.
#
# Scale with -s: filesize, nthreads, iosize, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $filesize=1g
set $nthreads=1
set $iosize=1m
set $runtime=10

define file name=largefile1, path=$dir, size=$filesize, prealloc, reuse
define file name=largefile2, path=$dir, size=$filesize, prealloc, reuse
define file name=largefile3, path=$dir, size=$filesize, prealloc, reuse
define file name=largefile4, path=$dir, size=$filesize, prealloc, reuse
define file name=largefile5, path=$dir, size=$filesize, prealloc, reuse

define process name=seqwrite, instances=1
{
  thread name=seqwrite1, memsize=10m, instances=$nthreads
  {
    flowop write name=seqwrite1, filename=largefile1, iosize=$iosize
  }
  thread name=seqwrite2, memsize=10m, instances=$nthreads
  {
    flowop write name=seqwrite2, filename=largefile2, iosize=$iosize
  }
  thread name=seqwrite3, memsize=10m, instances=$nthreads
  {
    flowop write name=seqwrite3, filename=largefile3, iosize=$iosize
  }
  thread name=seqwrite4, memsize=10m, instances=$nthreads
  {
    flowop write name=seqwrite4, filename=largefile4, iosize=$iosize
  }
  thread name=seqwrite5, memsize=10m, instances=$nthreads
  {
    flowop write name=seqwrite5, filename=largefile5, iosize=$iosize
  }
}

run $runtime
