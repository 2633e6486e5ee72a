# fsbench: schedseq - two processes reading their own large file sequentially in 64 KiB requests
#
# From the deceptive-idleness study of disk schedulers (Iyer and Druschel,
# SOSP 2001): two processes, each reading its own large file in $iosize
# (64 KiB) requests, one request at a time, optionally thinking between
# requests.
# Each reads its file from start to end, then starts over.
#
# Scale with -s: filesize, iosize, runtime; usemmap, burst, thinkmin, thinkmean
# (think2min, think2mean for reader 2 alone), thinktime, ioprio1, ioprio2
# for the read-versus-mmap and think-time variants. fsbench replaces $dir with
# its run directory.

set $dir=/tmp
set $filesize=1g
set $iosize=64k
set $runtime=10
# Read through a memory map instead of read(2): -s usemmap=true
set $usemmap=false
# Think time after every $burst requests, in microseconds, uniform in
# [$thinkmin, 2*$thinkmean - $thinkmin]: fixed when thinkmin = thinkmean, none when
# both are 0. The study's adversary: -s burst=N with a pause just over the
# scheduler's anticipation threshold (-s thinktime=idle+1ms).
set $burst=1
# A fixed think time for both readers in one variable: -s thinktime=6000 sets thinkmin and
# thinkmean (and so reader 2's) to 6 ms. -s thinktime=idle+1ms is the adversary's wait, just
# past the idle window of the scheduler of the disk under the run (read from sysfs).
set $thinktime=0
set $thinkmin=$thinktime
set $thinkmean=$thinktime
set $think=randvar(type=uniform, min=$thinkmin, mean=$thinkmean)
# Reader 2's think time: the same as reader 1's unless set apart. The study's
# asymmetric case, one reader thinking and the other not:
# -s thinkmin=7000 -s thinkmean=7000 -s think2min=0 -s think2mean=0
set $think2min=$thinkmin
set $think2mean=$thinkmean
set $think2=randvar(type=uniform, min=$think2min, mean=$think2mean)
# Each reader's I/O priority: a best-effort level, 0 (highest) to 7; 8 leaves the thread's
# own (Filebench's default). BFQ gives a queue the weight (8 - level) x 10, so the study's
# proportional share 1:2 is -s ioprio1=6 -s ioprio2=4 (weights 20 and 40); the run's
# "Shares of the bytes" line (process.NAME.share in an experiment) says what each got.
set $ioprio1=8
set $ioprio2=8

define file name=reader1file, path=$dir, size=$filesize, prealloc, reuse
define file name=reader2file, path=$dir, size=$filesize, prealloc, reuse

define process name=reader1, instances=1
{
  thread name=reader1, memsize=1m, instances=1, ioprio=$ioprio1
  {
    flowop read name=read1, filename=reader1file, iosize=$iosize, mmap=$usemmap, iters=$burst
    flowop think name=think1, value=$think
  }
}

define process name=reader2, instances=1
{
  thread name=reader2, memsize=1m, instances=1, ioprio=$ioprio2
  {
    flowop read name=read2, filename=reader2file, iosize=$iosize, mmap=$usemmap, iters=$burst
    flowop think name=think2, value=$think2
  }
}

run $runtime
