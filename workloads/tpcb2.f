# fsbench: tpcb2 - TPC-B-like on two files: each client's random 64 KiB record read-modify-writes in its own file
#
# From the deceptive-idleness study's TPC-B-like benchmark, its two-file case: two
# clients, each working on its own large file of $filesize holding $iosize (64 KiB)
# records, each request to a random record: read it, then write it back (the fsbench
# `sameoffset` extension). Compare with `tpcb` (both clients on one file): the study
# found idling gained 4% on one file and 28% on two, where the clients' records lie far
# apart. Give each file half of tpcb's $filesize for the same database size.
#
# Scale with -s: filesize (per file), iosize, runtime. fsbench replaces $dir with its run
# directory.

set $dir=/tmp
set $filesize=512m
set $iosize=64k
set $runtime=10

define file name=accounts1, path=$dir, size=$filesize, prealloc, reuse
define file name=accounts2, path=$dir, size=$filesize, prealloc, reuse

define process name=client1, instances=1
{
  thread name=client1, memsize=1m, instances=1
  {
    flowop read  name=read-record1, filename=accounts1, iosize=$iosize, random
    flowop write name=write-record1, filename=accounts1, iosize=$iosize, sameoffset
  }
}

define process name=client2, instances=1
{
  thread name=client2, memsize=1m, instances=1
  {
    flowop read  name=read-record2, filename=accounts2, iosize=$iosize, random
    flowop write name=write-record2, filename=accounts2, iosize=$iosize, sameoffset
  }
}

run $runtime
