# fsbench: copyfiles - copy a tree of small files into an empty tree, until every file is copied
#
# Like "cp -r" of a source tree. bigfileset holds $nfiles files of
# $meanfilesize bytes (about $meandirwidth entries per directory, all
# present, laid out in parallel); destfiles has the same shape and starts
# empty. Each of $nthreads threads repeats: open a source file and read it
# whole, create a destination file and write it whole with the source's
# length (both in $iosize chunks), close both. The run ends when a thread
# finds no destination left to create, or after $runtime seconds.
#
# Scale with -s: nfiles, meandirwidth, meanfilesize, iosize, nthreads,
# runtime. fsbench replaces $dir with its run directory.

set $dir=/tmp
set $nfiles=1000
set $meandirwidth=20
set $meanfilesize=16k
set $iosize=1m
set $nthreads=1
set $runtime=60

set mode quit firstdone

define fileset name=bigfileset, path=$dir, size=$meanfilesize, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc=100, paralloc
define fileset name=destfiles, path=$dir, size=$meanfilesize, entries=$nfiles,
    dirwidth=$meandirwidth

define process name=filereader, instances=1
{
  thread name=filereaderthread, memsize=10m, instances=$nthreads
  {
    flowop openfile       name=openfile1, filesetname=bigfileset, fd=1
    flowop readwholefile  name=readfile1, fd=1, iosize=$iosize
    flowop createfile     name=createfile2, filesetname=destfiles, fd=2
    flowop writewholefile name=writefile2, fd=2, srcfd=1, iosize=$iosize
    flowop closefile      name=closefile1, fd=1
    flowop closefile      name=closefile2, fd=2
  }
}

run $runtime
