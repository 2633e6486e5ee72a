# fsbench: oltp-sync - Filebench's oltp with synchronous writes, for targets without
# asynchronous I/O (NFS through libnfs refuses aiowrite/aiowait).
#
# As workloads/oltp.f: one log writer, $ndbwriters database writers and $nshadows shadow
# readers (the clients: each a process issuing one random $iosize read per transaction),
# sharing $nfiles data files and a log. The writers' `aiowrite`s are `write`s here (O_DSYNC
# as before) and their `aiowait`s are gone: each write waits for itself. Everything else,
# and the semaphores that tie the writers to the readers' commits, is Filebench's.

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
set $runtime=10

eventgen rate=$eventrate

define fileset name=datafiles, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=1024, prealloc=100
define fileset name=logfile, path=$dir, size=$logfilesize, entries=$nlogfiles,
    dirwidth=1024, prealloc=100

define process name=lgwr, instances=1
{
  thread name=lgwr, memsize=$memperthread
  {
    flowop write    name=lg-write, filesetname=logfile, iosize=256k, random, dsync
    flowop semblock name=lg-block, value=3200, highwater=1000
  }
}

define process name=dbwr, instances=$ndbwriters
{
  thread name=dbwr, memsize=$memperthread
  {
    flowop write    name=dbwrite-a, filesetname=datafiles,
        iosize=$iosize, workingset=$workingset, random, iters=100, opennext, dsync
    flowop hog      name=dbwr-hog, value=10000
    flowop semblock name=dbwr-block, value=1000, highwater=2000
  }
}

define process name=shadow, instances=$nshadows
{
  thread name=shadow, memsize=$memperthread
  {
    flowop read      name=shadowread, filesetname=datafiles,
        iosize=$iosize, workingset=$workingset, random, opennext
    flowop hog       name=shadowhog, value=$usermode
    flowop sempost   name=shadow-post-lg, value=1, target=lg-block, blocking
    flowop sempost   name=shadow-post-dbwr, value=1, target=dbwr-block, blocking
    flowop eventlimit name=random-rate
  }
}

run $runtime
