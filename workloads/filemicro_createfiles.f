# fsbench: filemicro_createfiles - create and write small files in a half-populated flat directory, then stop
#
# File-creation micro-benchmark. bigfileset describes $nfiles files of
# $filesize bytes in one flat directory ($meandirwidth exceeds the file
# count), half of them present at start. A thread repeats: create a missing
# file, write it whole in $iosize chunks, close it. The run stops after
# $count operations in all; a loop is three operations, so 15000 means 5000
# files.
#
# Scale with -s: count, filesize, iosize, meandirwidth, nfiles, nthreads,
# runtime. fsbench replaces $dir with its run directory.

set $dir=/tmp
set $count=15000
set $filesize=1k
set $iosize=1m
set $meandirwidth=100000
set $nfiles=20000
set $nthreads=1
set $runtime=60

set mode quit alldone

define fileset name=bigfileset, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc=50

define process name=filecreate, instances=1
{
  thread name=filecreatethread, memsize=10m, instances=$nthreads
  {
    flowop createfile     name=createfile1, filesetname=bigfileset, fd=1
    flowop writewholefile name=writefile1, filesetname=bigfileset, fd=1, iosize=$iosize
    flowop closefile      name=closefile1, fd=1
    flowop finishoncount  name=finish, value=$count
  }
}

run $runtime
