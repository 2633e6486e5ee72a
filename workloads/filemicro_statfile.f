# fsbench: filemicro_statfile - stat throughput over a tree of 128 KiB files
#
# bigfileset holds $nfiles files of $filesize bytes (about $meandirwidth
# per directory), all created before the run. Each of $nthreads threads
# calls stat on the files in turn for $runtime seconds.
#
# Scale with -s: nfiles, meandirwidth, filesize, nthreads, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $nfiles=10000
set $meandirwidth=20
set $filesize=128k
set $nthreads=20
set $runtime=10

define fileset name=bigfileset, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc=100

define process name=examinefiles, instances=1
{
  thread name=examinefilethread, memsize=10m, instances=$nthreads
  {
    flowop statfile name=statfile1, filesetname=bigfileset
  }
}

run $runtime
