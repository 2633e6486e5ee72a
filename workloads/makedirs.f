# fsbench: makedirs - mkdir throughput: create the leaf directories of a tree until none is left
#
# bigfileset describes a tree with $ndirs leaf directories (about
# $meandirwidth entries per directory) and no files; none of the leaf
# directories exists at start. Each of $nthreads threads calls mkdir on a
# missing leaf directory. The run ends when a thread finds none left, or
# after $runtime seconds.
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
    dirwidth=$meandirwidth

define process name=dirmake, instances=1
{
  thread name=dirmaker, memsize=1m, instances=$nthreads
  {
    flowop makedir name=mkdir1, filesetname=bigfileset
  }
}

run $runtime
