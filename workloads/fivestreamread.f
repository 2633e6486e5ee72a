# fsbench: fivestreamread - five concurrent streams of sequential 1 MiB reads, one per file
#
# Five files of $filesize bytes (kept if they already exist), laid out
# before the run. Five thread groups of $nthreads threads (one by default)
# each read their own file sequentially in $iosize chunks, starting again
# at the beginning at the end of the file. Shows how the file system and
# device cope with several interleaved sequential streams.
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

define process name=seqread, instances=1
{
  thread name=seqread1, memsize=10m, instances=$nthreads
  {
    flowop read name=seqread1, filename=largefile1, iosize=$iosize
  }
  thread name=seqread2, memsize=10m, instances=$nthreads
  {
    flowop read name=seqread2, filename=largefile2, iosize=$iosize
  }
  thread name=seqread3, memsize=10m, instances=$nthreads
  {
    flowop read name=seqread3, filename=largefile3, iosize=$iosize
  }
  thread name=seqread4, memsize=10m, instances=$nthreads
  {
    flowop read name=seqread4, filename=largefile4, iosize=$iosize
  }
  thread name=seqread5, memsize=10m, instances=$nthreads
  {
    flowop read name=seqread5, filename=largefile5, iosize=$iosize
  }
}

run $runtime
