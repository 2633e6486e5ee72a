# fsbench: tpcbselect - TPC-B-like, select only: two clients reading random 64 KiB records of a large file
#
# From the deceptive-idleness study's TPC-B-like benchmark: $nthreads clients
# (two) work on one large file of $filesize holding $iosize (64 KiB) records,
# each request to a random record.
# The select-only variant: each transaction reads one random record.
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
    flowop read name=read-record, filename=accounts, iosize=$iosize, random
  }
}

run $runtime
