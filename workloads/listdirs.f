# fsbench: listdirs - readdir throughput over a deep tree of empty files
#
# bigfileset is a deep tree ($meandirwidth entries per directory) holding
# $nfiles empty files, all created before the run. Each of $nthreads threads
# repeatedly lists (opendir/readdir) an inner directory of the tree.
#
# Scale with -s: nfiles, meandirwidth, nthreads, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $nfiles=50000
set $meandirwidth=5
set $nthreads=16
set $runtime=10

define fileset name=bigfileset, path=$dir, size=0, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc

define process name=lsdir, instances=1
{
  thread name=dirlister, memsize=1m, instances=$nthreads
  {
    flowop listdir name=open1, filesetname=bigfileset
  }
}

run $runtime
