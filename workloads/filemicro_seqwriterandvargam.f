# fsbench: filemicro_seqwriterandvargam - grow empty files by 128Ki appends of gamma-distributed size (mean 5.5 KiB)
#
# bigfileset has one empty file per thread. Each of $nthreads threads opens
# a file, extends it by $count appends whose sizes are gamma distributed (at
# least 1 KiB, mean 5.5 KiB, shape 1.5), closes it; the run stops after that
# one loop.
# $sync=true opens the files with O_DSYNC.
#
# Filebench's file declared the size with "define randvar" and used
# cached=false; Filebench 1.5 accepts neither. Here the size is
# "set $iosize=randvar(...)" with the same parameters and the cache
# attribute is left out (drop the page cache yourself for a cold run).
#
# Scale with -s: nthreads, sync, count, runtime (and the randvar iosize).
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $nthreads=1
set $sync=false
set $count=128k
set $runtime=60

# Append size: gamma, at least 1 KiB, mean 5632 bytes, shape 1.5.
set $iosize=randvar(type=gamma, min=1k, mean=5632, gamma=1500)

set mode quit alldone

define fileset name=bigfileset, path=$dir, size=0, entries=$nthreads,
    dirwidth=1024, prealloc=100

define process name=filewriter, instances=1
{
  thread name=filewriterthread, memsize=10m, instances=$nthreads
  {
    flowop openfile      name=open-file, filesetname=bigfileset, fd=1
    flowop appendfile    name=write-file, dsync=$sync, iosize=$iosize, fd=1,
        iters=$count
    flowop closefile     name=close, fd=1
    flowop finishoncount name=finish, value=1
  }
}

run $runtime
