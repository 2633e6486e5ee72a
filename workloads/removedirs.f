# fsbench: removedirs - rmdir throughput: remove the empty leaf directories of a tree until none is left
#
# bigfileset is a tree with $ndirs empty leaf directories (about
# $meandirwidth entries per directory), all created before the run. Each of
# $nthreads threads calls rmdir on an existing leaf directory. The run ends
# when a thread finds none left, or after $runtime seconds.
#
# Scale with -s: ndirs, meandirwidth, nthreads, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $ndirs=10000
set $meandirwidth=100
set $nthreads=16
set $runtime=60

set mode quit firstdone

define fileset name=bigfileset, path=$dir, size=0, leafdirs=$ndirs,
    dirwidth=$meandirwidth, prealloc

define process name=remdir, instances=1
{
  thread name=removedirectory, memsize=1m, instances=$nthreads
  {
    flowop removedir name=dirremover, filesetname=bigfileset
  }
}

run $runtime
