# fsbench: oltp - OLTP database: log writer, DB writers and shadow readers doing small random I/O
#
# An Oracle-style transaction-processing database, modelled as three kinds of
# process sharing $nfiles data files and $nlogfiles log files (kept if they
# already exist: reuse):
#   lgwr     1 log writer: asynchronous 256 KiB random O_DSYNC writes to the
#            log, waits for them, then blocks on a semaphore until the
#            shadows have posted enough commits.
#   dbwr     $ndbwriters database writers: 100 asynchronous random O_DSYNC
#            writes of $iosize each (rotating over the data files), some CPU
#            work, a semaphore wait for the shadows, then wait for the I/O.
#   shadow   $nshadows foreground processes: one random $iosize read
#            (rotating over the data files), $usermode iterations of CPU work
#            standing for query processing, then wake the log and DB writers.
#            eventlimit paces these loops to the eventgen rate.
# $eventrate=0 means no pacing. $workingset=0 spreads random I/O over the
# whole file. $directio=1 opens with O_DIRECT. useism asks for the I/O
# buffers ($memperthread per thread) in SysV shared memory, like a
# database's SGA.
#
# Scale with -s: nfiles, filesize, nlogfiles, logfilesize, nshadows,
# ndbwriters, iosize, usermode, memperthread, workingset, directio, eventrate,
# runtime. fsbench replaces $dir with its run directory.

set $dir=/tmp
set $eventrate=0
set $iosize=2k
set $nshadows=200
set $ndbwriters=10
set $usermode=200000
set $filesize=10m
set $memperthread=1m
set $workingset=0
set $logfilesize=10m
set $nfiles=10
set $nlogfiles=1
set $directio=0
set $runtime=10

eventgen rate=$eventrate

define fileset name=datafiles, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=1024, prealloc=100, reuse
define fileset name=logfile, path=$dir, size=$logfilesize, entries=$nlogfiles,
    dirwidth=1024, prealloc=100, reuse

# The log writer.
define process name=lgwr, instances=1
{
  thread name=lgwr, memsize=$memperthread, useism
  {
    flowop aiowrite name=lg-write, filesetname=logfile,
        iosize=256k, random, directio=$directio, dsync
    flowop aiowait  name=lg-aiowait
    flowop semblock name=lg-block, value=3200, highwater=1000
  }
}

# The database writers.
define process name=dbwr, instances=$ndbwriters
{
  thread name=dbwr, memsize=$memperthread, useism
  {
    flowop aiowrite name=dbwrite-a, filesetname=datafiles,
        iosize=$iosize, workingset=$workingset, random, iters=100, opennext,
        directio=$directio, dsync
    flowop hog      name=dbwr-hog, value=10000
    flowop semblock name=dbwr-block, value=1000, highwater=2000
    flowop aiowait  name=dbwr-aiowait
  }
}

# The shadow (foreground) processes.
define process name=shadow, instances=$nshadows
{
  thread name=shadow, memsize=$memperthread, useism
  {
    flowop read      name=shadowread, filesetname=datafiles,
        iosize=$iosize, workingset=$workingset, random, opennext,
        directio=$directio
    flowop hog       name=shadowhog, value=$usermode
    flowop sempost   name=shadow-post-lg, value=1, target=lg-block, blocking
    flowop sempost   name=shadow-post-dbwr, value=1, target=dbwr-block, blocking
    flowop eventlimit name=random-rate
  }
}

run $runtime
