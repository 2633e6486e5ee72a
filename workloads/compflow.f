# fsbench: compflow - composite-flowop demo: nested user-defined flowops taking a fileset name as a parameter
#
# Shows composite flowops (define flowop) calling one another with local
# variables. "dowork" creates a file and appends to it, runs "readwrite"
# $rwiters times, then deletes one file and stats another; "readwrite" opens
# two files, reads the first whole and writes the second whole with the first
# one's length. Both receive the fileset to work on as a local variable, so
# three groups of $nthreads threads run the same code on three filesets
# (bigfileset, u2fileset, u3fileset of $nfiles files of $filesize bytes,
# 80% present) with 5, 4 and 3 read/write rounds.
# Filebench 1.5 rejects this file ("Cannot find source variable filesetnm")
# because it cannot pass a local variable on to a nested composite; fsbench
# resolves it. Filebench's file has no run line; fsbench adds one.
#
# Scale with -s: nfiles, meandirwidth, filesize, nthreads, meaniosize,
# runtime. fsbench replaces $dir with its run directory.

set $dir=/tmp
set $nfiles=700
set $meandirwidth=20
set $filesize=128k
set $nthreads=10
set $meaniosize=16k
set $runtime=10

define fileset name=bigfileset, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc=80, paralloc
define fileset name=u2fileset, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc=80, paralloc
define fileset name=u3fileset, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc=80, paralloc

# Copy one file of $fileset over another (whole-file read, then whole-file write).
define flowop name=readwrite, $fileset
{
  flowop openfile       name=openfile4, filesetname=$fileset, fd=1
  flowop openfile       name=openfile5, filesetname=$fileset, fd=2
  flowop readwholefile  name=readfile1, fd=1
  flowop writewholefile name=writefile1, fd=2, srcfd=1
  flowop closefile      name=closefile4, fd=1
  flowop closefile      name=closefile5, fd=2
}

# One unit of work on $filesetnm; calls readwrite $rwiters times.
define flowop name=dowork, $filesetnm, $rwiters
{
  flowop createfile     name=createfile1, filesetname=$filesetnm, fd=1
  flowop appendfilerand name=appendfilerand1, iosize=$meaniosize, fd=1
  flowop closefile      name=closefile1, fd=1
  flowop readwrite      name=rw1, iters=$rwiters, $fileset=$filesetnm
  flowop deletefile     name=deletefile1, filesetname=$filesetnm
  flowop statfile       name=statfile1, filesetname=$filesetnm
}

define process name=filereader1, instances=1
{
  thread name=user1, memsize=10m, instances=$nthreads
  {
    flowop dowork name=dowork1, iters=1, $rwiters=5, $filesetnm=bigfileset
  }
  thread name=user2, memsize=10m, instances=$nthreads
  {
    flowop dowork name=dowork2, iters=1, $rwiters=4, $filesetnm=u2fileset
  }
  thread name=user3, memsize=10m, instances=$nthreads
  {
    flowop dowork name=dowork3, iters=1, $rwiters=3, $filesetnm=u3fileset
  }
}

run $runtime
