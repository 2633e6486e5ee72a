# fsbench: createfiles - populate an empty tree: create, write whole and close files until it is full
#
# File creation throughput (an untar or a build output directory).
# bigfileset describes $nfiles files of $meanfilesize bytes, about
# $meandirwidth per directory, none present at start. Each of $nthreads
# threads repeats: create a file, write it whole in $iosize chunks, close it.
# The run ends when a thread finds no file left to create, or after
# $runtime seconds.
#
# Scale with -s: nfiles, meandirwidth, meanfilesize, iosize, nthreads,
# runtime. fsbench replaces $dir with its run directory.

set $dir=/tmp
set $nfiles=50000
set $meandirwidth=100
set $meanfilesize=16k
set $iosize=1m
set $nthreads=16
set $runtime=60

set mode quit firstdone

define fileset name=bigfileset, path=$dir, size=$meanfilesize, entries=$nfiles,
    dirwidth=$meandirwidth

define process name=filecreate, instances=1
{
  thread name=filecreatethread, memsize=10m, instances=$nthreads
  {
    flowop createfile     name=createfile1, filesetname=bigfileset, fd=1
    flowop writewholefile name=writefile1, fd=1, iosize=$iosize
    flowop closefile      name=closefile1, fd=1
  }
}

run $runtime
