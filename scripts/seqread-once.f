# fsbench: seqread-once - read one file once, sequentially, then stop
#
# Used by scripts/disk-evidence.sh to compare a fresh and an aged file system:
# the file is laid out (prealloc, reuse: it stays in the run directory between
# runs) and then read from start to end in $iosize requests; the thread stops
# after $filesize bytes, so the throughput is that of one pass.

set $dir=/tmp
set $filesize=64m
set $iosize=1m

define file name=seqfile, path=$dir, size=$filesize, prealloc, reuse

define process name=reader, instances=1
{
  thread name=reader, memsize=1m, instances=1
  {
    flowop read name=seqread, filename=seqfile, iosize=$iosize
    flowop finishonbytes name=done, value=$filesize
  }
}

run 600
