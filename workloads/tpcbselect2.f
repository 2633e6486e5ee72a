# fsbench: tpcbselect2 - TPC-B-like select only on two files: each client's random 64 KiB record reads in its own file
#
# From the deceptive-idleness study's TPC-B-like benchmark, its select-only two-file
# case: two clients, each reading random $iosize (64 KiB) records of its own large file
# of $filesize. Compare with `tpcbselect` (both clients on one file): the study found
# idling gained 17% on one file and 60% on two. Give each file half of tpcbselect's
# $filesize for the same database size.
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
    flowop read name=read-record1, filename=accounts1, iosize=$iosize, random
  }
}

define process name=client2, instances=1
{
  thread name=client2, memsize=1m, instances=1
  {
    flowop read name=read-record2, filename=accounts2, iosize=$iosize, random
  }
}

run $runtime
