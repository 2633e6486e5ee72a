# fsbench: tpcb - TPC-B-like: two clients doing random 64 KiB record read-modify-writes in a large file
#
# From the deceptive-idleness study's TPC-B-like benchmark: $nthreads clients
# (two) work on one large file of $filesize holding $iosize (64 KiB) records,
# each request to a random record.
# Each transaction reads a random record and writes the same record back
# (the fsbench `sameoffset` extension: the write goes to the offset of the
# thread's previous read on that file).
#
# Scale with -s: filesize, iosize, nthreads, runtime. fsbench replaces $dir
# with its run directory.

set $dir=/tmp
set $filesize=1g
set $iosize=64k
set $nthreads=2
set $runtime=10

define file name=accounts, path=$dir, size=$filesize, prealloc, reuse

define process name=tpcb, instances=1
{
  thread name=client, memsize=1m, instances=$nthreads
  {
    flowop read  name=read-record, filename=accounts, iosize=$iosize, random
    flowop write name=write-record, filename=accounts, iosize=$iosize, sameoffset
  }
}

run $runtime
