# fsbench: schedalt - two processes reading their own large file in 64 KiB requests, read-ahead off (stand-in for alternate chunks)
#
# From the deceptive-idleness study of disk schedulers (Iyer and Druschel,
# SOSP 2001): two processes, each reading its own large file in $iosize
# (64 KiB) requests, one request at a time.
# The study's "every alternate chunk" pattern defeats read-ahead while
# keeping seeks short. The workload language has no stride or skip yet, so
# this personality approximates it: sequential requests on a file opened with
# read-ahead disabled (POSIX_FADV_RANDOM), so, as with alternate chunks, the
# kernel cannot prefetch and every request waits for the disk.
#
# Scale with -s: filesize, iosize, runtime. fsbench replaces $dir with its
# run directory.

set $dir=/tmp
set $filesize=1g
set $iosize=64k
set $runtime=10

define file name=reader1file, path=$dir, size=$filesize, prealloc, reuse
define file name=reader2file, path=$dir, size=$filesize, prealloc, reuse

define process name=reader1, instances=1
{
  thread name=reader1, memsize=1m, instances=1
  {
    flowop read name=read1, filename=reader1file, iosize=$iosize, noreadahead
  }
}

define process name=reader2, instances=1
{
  thread name=reader2, memsize=1m, instances=1
  {
    flowop read name=read2, filename=reader2file, iosize=$iosize, noreadahead
  }
}

run $runtime
