# fsbench: openfiles - open/close throughput (path lookup) over a tree of empty files
#
# bigfileset is a tree of $nfiles empty files, about $meandirwidth per
# directory, all created before the run. Each of $nthreads threads
# repeatedly opens a file and closes it again.
#
# Scale with -s: nfiles, meandirwidth, nthreads, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $nfiles=50000
set $meandirwidth=100
set $nthreads=16
set $runtime=10

define fileset name=bigfileset, path=$dir, size=0, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc

define process name=fileopen, instances=1
{
  thread name=fileopener, memsize=1m, instances=$nthreads
  {
    flowop openfile  name=open1, filesetname=bigfileset, fd=1
    flowop closefile name=close1, fd=1
  }
}

run $runtime
