# fsbench: singlestreamwrite - one stream of sequential 1 MiB writes growing a file
#
# The file starts small (Filebench gives it no size, so the 1 KiB default
# applies) and $nthreads threads (one by default) write to it sequentially
# in $iosize chunks, without fsync, so it grows for the whole run: the
# file system needs free space for runtime x write bandwidth.
# Writes go to the page cache and are flushed by the kernel in the
# background (singlestreamwritedirect bypasses the cache).
#
# Scale with -s: iosize, nthreads, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $iosize=1m
set $nthreads=1
set $runtime=10

define file name=largefile1, path=$dir, prealloc

define process name=seqwrite, instances=1
{
  thread name=seqwrite, memsize=10m, instances=$nthreads
  {
    flowop write name=seqwrite, filename=largefile1, iosize=$iosize
  }
}

run $runtime
