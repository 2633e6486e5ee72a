# fsbench: webproxy - caching web proxy: replace cached objects, then serve five whole-file reads
#
# A caching proxy such as Squid. $nfiles cached objects of $meanfilesize bytes
# live in one flat directory ($meandirwidth exceeds the file count); 80%
# exist at start. Each of $nthreads threads repeats: evict an object (delete),
# fetch a new one (create, append 1 byte to $meaniosize - 1 bytes, close),
# then serve five objects (open, read whole in $iosize chunks, close).
# The closing opslimit only throttles when an eventgen rate is set, which
# this workload does not do, so by default it runs unthrottled.
# Filebench's file has no run line; fsbench adds one so it runs on its own.
#
# Scale with -s: nfiles, meandirwidth, meanfilesize, nthreads, meaniosize,
# iosize, runtime. fsbench replaces $dir with its run directory.

set $dir=/tmp
set $nfiles=10000
set $meandirwidth=1000000
set $meanfilesize=16k
set $nthreads=100
set $meaniosize=16k
set $iosize=1m
set $runtime=10

define fileset name=bigfileset, path=$dir, size=$meanfilesize, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc=80

define process name=proxycache, instances=1
{
  thread name=proxycache, memsize=10m, instances=$nthreads
  {
    flowop deletefile     name=deletefile1, filesetname=bigfileset
    flowop createfile     name=createfile1, filesetname=bigfileset, fd=1
    flowop appendfilerand name=appendfilerand1, iosize=$meaniosize, fd=1
    flowop closefile      name=closefile1, fd=1
    flowop openfile       name=openfile2, filesetname=bigfileset, fd=1
    flowop readwholefile  name=readfile2, fd=1, iosize=$iosize
    flowop closefile      name=closefile2, fd=1
    flowop openfile       name=openfile3, filesetname=bigfileset, fd=1
    flowop readwholefile  name=readfile3, fd=1, iosize=$iosize
    flowop closefile      name=closefile3, fd=1
    flowop openfile       name=openfile4, filesetname=bigfileset, fd=1
    flowop readwholefile  name=readfile4, fd=1, iosize=$iosize
    flowop closefile      name=closefile4, fd=1
    flowop openfile       name=openfile5, filesetname=bigfileset, fd=1
    flowop readwholefile  name=readfile5, fd=1, iosize=$iosize
    flowop closefile      name=closefile5, fd=1
    flowop openfile       name=openfile6, filesetname=bigfileset, fd=1
    flowop readwholefile  name=readfile6, fd=1, iosize=$iosize
    flowop closefile      name=closefile6, fd=1
    flowop opslimit       name=limit
  }
}

run $runtime
