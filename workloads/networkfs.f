# fsbench: networkfs - network file server client mix: launches, read-modify-writes, appends and stats, rate-paced
#
# Models the file traffic of desktop clients on a network file server. All
# access goes to one tree of $nfiles files with a skewed choice of file
# (indexed=$fileidx), and each pass of the loop is paced to the eventgen rate
# ($eventrate loops per second in total; 0 means unpaced). One pass is:
#   launch x1  open three files and read them whole (an application start);
#   rmw    x6  read a file whole, create a file and write it whole as large
#              as the one read, close both, delete the one read;
#   appnd  x3  open a file, append a random amount, close;
#   a stat of one file.
# I/O and file sizes follow Filebench's tables (tabular randvars below):
# reads are mostly 8 KiB, writes mostly 9-15 KiB, files mostly a few KiB with
# a tail up to 1.7 MiB. $fileidx has no mean, so (as in Filebench) its mean
# is its shape, 0.1: the index (sample x $nfiles/2, modulo $nfiles) is
# concentrated on the first files of the set.
#
# Filebench ships this workload twice: networkfs.f, which Filebench 1.5
# cannot load, and its repaired copy netsfs.f, which this file follows.
# networkfs.f sized the set as $nfiles * $eventrate (10000 x 10), arithmetic
# that Filebench 1.5 no longer parses; here $nfiles is the total, 100000,
# and changing $eventrate does not resize the set. Its cached=false (evict
# the files from the page cache after layout) no longer exists either and
# is left out.
#
# Scale with -s: nfiles, meandirwidth, nthreads, eventrate, runtime (and the
# randvars wrtiosize, rdiosize, filesize, fileidx).
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $eventrate=10
set $meandirwidth=20
set $nthreads=1
set $nfiles=100000
set $runtime=10

eventgen rate=$eventrate

# Write sizes (percent, low, high).
set $wrtiosize=randvar(type=tabular, min=1k, round=1k, randtable=
  {{ 0,   1k,    7k},
   {50,   9k,   15k},
   {14,  17k,   23k},
   {14,  33k,   39k},
   {12,  65k,   71k},
   {10, 129k,  135k}})

# Read sizes.
set $rdiosize=randvar(type=tabular, min=8k, round=1k, randtable=
  {{85,   8k,    8k},
   { 8,  17k,   23k},
   { 4,  33k,   39k},
   { 2,  65k,   71k},
   { 1, 129k,  135k}})

# File sizes, sampled once per file at layout.
set $filesize=randvar(type=tabular, min=1k, round=1k, randtable=
  {{33,   1k,    1k},
   {21,   1k,    3k},
   {13,   3k,    5k},
   {10,   5k,   11k},
   { 8,  11k,   21k},
   { 5,  21k,   43k},
   { 4,  43k,   85k},
   { 3,  85k,  171k},
   { 2, 171k,  341k},
   { 1, 341k, 1707k}})

# Which file an indexed flowop picks.
set $fileidx=randvar(type=gamma, min=0, gamma=100)

define fileset name=bigfileset, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc=60

# Read-modify-write: copy a file to a new one and delete the original.
define flowop name=rmw
{
  flowop openfile       name=openfile1, filesetname=bigfileset, indexed=$fileidx, fd=1
  flowop readwholefile  name=readfile1, iosize=$rdiosize, fd=1
  flowop createfile     name=newfile2, filesetname=bigfileset, indexed=$fileidx, fd=2
  flowop writewholefile name=writefile2, fd=2, iosize=$wrtiosize, srcfd=1
  flowop closefile      name=closefile1, fd=1
  flowop closefile      name=closefile2, fd=2
  flowop deletefile     name=deletefile1, fd=1
}

# Application launch: read three files whole, with overlapping opens.
define flowop name=launch
{
  flowop openfile      name=openfile3, filesetname=bigfileset, indexed=$fileidx, fd=3
  flowop readwholefile name=readfile3, iosize=$rdiosize, fd=3
  flowop openfile      name=openfile4, filesetname=bigfileset, indexed=$fileidx, fd=4
  flowop readwholefile name=readfile4, iosize=$rdiosize, fd=4
  flowop closefile     name=closefile3, fd=3
  flowop openfile      name=openfile5, filesetname=bigfileset, indexed=$fileidx, fd=5
  flowop readwholefile name=readfile5, iosize=$rdiosize, fd=5
  flowop closefile     name=closefile4, fd=4
  flowop closefile     name=closefile5, fd=5
}

# Append to an existing file.
define flowop name=appnd
{
  flowop openfile       name=openfile6, filesetname=bigfileset, indexed=$fileidx, fd=6
  flowop appendfilerand name=appendfilerand6, iosize=$wrtiosize, fd=6
  flowop closefile      name=closefile6, fd=6
}

define process name=netclient, instances=1
{
  thread name=fileuser, memsize=10m, instances=$nthreads
  {
    flowop launch     name=launch1, iters=1
    flowop rmw        name=rmw1, iters=6
    flowop appnd      name=appnd1, iters=3
    flowop statfile   name=statfile1, filesetname=bigfileset, indexed=$fileidx
    flowop eventlimit name=ratecontrol
  }
}

run $runtime
