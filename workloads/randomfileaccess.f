# fsbench: randomfileaccess - skewed file choice: open three files, append to one, read two whole
#
# Exercises picking files by index (indexed=$fileidx) rather than in turn.
# bigfileset holds $nfiles files (about $meandirwidth per directory, all
# present) whose sizes follow a table: a third are 1 KiB, most are under
# 11 KiB, a few reach 1.7 MiB. Each of $nthreads threads repeats: open three
# files chosen by $fileidx, append a random amount to the first (uniform, 1
# byte to a gamma-distributed bound of mean 16 KiB), close it, read the other
# two whole in mostly 8 KiB chunks, close them.
# $fileidx has no mean, so (as in Filebench) its mean is its shape, 0.1: the
# index (sample x $nfiles/2, modulo $nfiles) favours the first files heavily.
#
# Filebench's file declared its random variables with "define randvar" and
# asked for a cold cache with cached=false; Filebench 1.5 accepts neither.
# Here they are "set $v=randvar(...)" with the same parameters, and the
# cache attribute is left out (drop caches yourself for a cold-cache run).
#
# Scale with -s: nfiles, meandirwidth, nthreads, runtime (and the randvars
# wrtiosize, rdiosize, filesize, fileidx).
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $meandirwidth=20
set $nthreads=5
set $nfiles=10000
set $runtime=10

# Append size bound: gamma, at least 512 bytes, rounded to 512.
set $wrtiosize=randvar(type=gamma, min=512, round=512, mean=16k, gamma=1500)

# Read chunk size (percent, low, high).
set $rdiosize=randvar(type=tabular, min=8k, round=1k, randtable=
  {{85,   8k,    8k},
   {15,   8k,   64k}})

# File sizes, sampled once per file at layout.
set $filesize=randvar(type=tabular, min=1k, randtable=
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
    dirwidth=$meandirwidth, prealloc=100

define process name=netclient, instances=1
{
  thread name=fileuser, memsize=10m, instances=$nthreads
  {
    flowop openfile       name=openfile1, filesetname=bigfileset, indexed=$fileidx, fd=1
    flowop openfile       name=openfile2, filesetname=bigfileset, indexed=$fileidx, fd=2
    flowop openfile       name=openfile3, filesetname=bigfileset, indexed=$fileidx, fd=3
    flowop appendfilerand name=appendfilerand1, iosize=$wrtiosize, fd=1
    flowop closefile      name=closefile1, fd=1
    flowop readwholefile  name=readfile1, iosize=$rdiosize, fd=2
    flowop readwholefile  name=readfile2, iosize=$rdiosize, fd=3
    flowop closefile      name=closefile2, fd=2
    flowop closefile      name=closefile3, fd=3
  }
}

run $runtime
