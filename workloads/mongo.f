# fsbench: mongo - document store: append to and re-read small files while draining a second set by deletes
#
# A MongoDB-like storage pattern over two filesets of $nfiles files of
# $filesize bytes each (about $dirwidth entries per directory, all present
# at start). Each of $nthreads threads repeats: open a file of postset,
# append 1 byte to $meaniosize - 1 bytes, close; open a file of postset, read
# it whole in $readiosize chunks, close; delete a file of postsetdel.
# The run ends when the first thread finds postsetdel empty (about $nfiles
# loops in all), or after $runtime seconds, whichever comes first.
#
# Scale with -s: nfiles, dirwidth, filesize, nthreads, meaniosize,
# readiosize, runtime. fsbench replaces $dir with its run directory.

set $dir=/tmp
set $nfiles=1000
set $dirwidth=20
set $filesize=16k
set $nthreads=1
set $meaniosize=16k
set $readiosize=1m
set $runtime=60

set mode quit firstdone

define fileset name=postset, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=$dirwidth, prealloc, paralloc
define fileset name=postsetdel, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=$dirwidth, prealloc, paralloc

define process name=filereader, instances=1
{
  thread name=filereaderthread, memsize=10m, instances=$nthreads
  {
    flowop openfile       name=openfile1, filesetname=postset, fd=1
    flowop appendfilerand name=appendfilerand1, iosize=$meaniosize, fd=1
    flowop closefile      name=closefile1, fd=1
    flowop openfile       name=openfile2, filesetname=postset, fd=1
    flowop readwholefile  name=readfile1, fd=1, iosize=$readiosize
    flowop closefile      name=closefile2, fd=1
    flowop deletefile     name=deletefile1, filesetname=postsetdel
  }
}

run $runtime
