# fsbench: singlestreamreaddirect - one stream of sequential 1 MiB reads of a large file with O_DIRECT
#
# One file of $filesize bytes (kept if it already exists), laid out before
# the run. $nthreads threads (one by default) read it sequentially in
# $iosize chunks, starting again from the beginning at the end of the file.
# The file is opened with O_DIRECT, so reads bypass the page cache; $iosize
# must suit the file system's direct I/O alignment.
#
# Scale with -s: filesize, nthreads, iosize, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $filesize=5g
set $nthreads=1
set $iosize=1m
set $runtime=10

define file name=largefile1, path=$dir, size=$filesize, prealloc, reuse

define process name=seqread, instances=1
{
  thread name=seqread, memsize=10m, instances=$nthreads
  {
    flowop read name=seqread, filename=largefile1, iosize=$iosize, directio
  }
}

run $runtime
