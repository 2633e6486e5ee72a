# fsbench: videoserver - video server: rate-limited streaming of active videos while one writer replaces passive ones
#
# A video-on-demand server with two filesets of $filesize videos:
# $actvidsname ($numactivevids videos being watched, all present) and
# $passvidsname ($numpassivevids videos on the shelf, half present).
#   vidreaders  $nthreads threads stream the active videos with sequential
#               $readiosize reads; bwlimit holds their combined bandwidth to
#               the eventgen rate ($eventrate events per second, one MiB
#               per event).
#   vidwriter   1 thread replaces a passive video every $repintval seconds:
#               delete one, create one, write it whole in $writeiosize chunks.
# The defaults are Filebench's and are large (10 GiB per video, about 1.3 TiB
# laid out); for a first look scale down, e.g. -s filesize=64m.
# $reuseit=true keeps videos left by an earlier run. Filebench's file has no
# run line; fsbench adds one so it runs on its own.
#
# Scale with -s: filesize, numactivevids, numpassivevids, nthreads,
# readiosize, writeiosize, eventrate, repintval, reuseit, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $eventrate=96
set $filesize=10g
set $nthreads=48
set $numactivevids=32
set $numpassivevids=194
set $reuseit=false
set $readiosize=256k
set $writeiosize=1m
set $passvidsname=passivevids
set $actvidsname=activevids
set $repintval=10
set $runtime=10

eventgen rate=$eventrate

define fileset name=$actvidsname, path=$dir, size=$filesize, entries=$numactivevids,
    dirwidth=4, prealloc, paralloc, reuse=$reuseit
define fileset name=$passvidsname, path=$dir, size=$filesize, entries=$numpassivevids,
    dirwidth=20, prealloc=50, paralloc, reuse=$reuseit

define process name=vidwriter, instances=1
{
  thread name=vidwriter, memsize=10m, instances=1
  {
    flowop deletefile     name=vidremover, filesetname=$passvidsname
    flowop createfile     name=wrtopen, filesetname=$passvidsname, fd=1
    flowop writewholefile name=newvid, iosize=$writeiosize, fd=1, srcfd=1
    flowop closefile      name=wrtclose, fd=1
    flowop delay          name=replaceinterval, value=$repintval
  }
}

define process name=vidreaders, instances=1
{
  thread name=vidreaders, memsize=10m, instances=$nthreads
  {
    flowop read    name=vidreader, filesetname=$actvidsname, iosize=$readiosize
    flowop bwlimit name=serverlimit, target=vidreader
  }
}

run $runtime
