# fsbench: webserver - web server: many threads reading small whole files, plus appends to one log file
#
# A static-content web server. $nfiles read-only pages (gamma distributed
# sizes, mean 16 KiB, shape 1.5) sit in a tree of about $meandirwidth entries
# per directory, all present at start. A second fileset holds a single log
# file. Each of $nthreads threads serves ten pages (open, read whole in
# $iosize chunks, close) and then appends one record of 1 byte to
# $meanappendsize - 1 bytes to the shared log. Mostly a page-cache and
# open/close (metadata) test once the pages are cached.
#
# Scale with -s: nfiles, meandirwidth, filesize, nthreads, iosize,
# meanappendsize, runtime. fsbench replaces $dir with its run directory.

set $dir=/tmp
set $nfiles=1000
set $meandirwidth=20
set $filesize=cvar(type=cvar-gamma,parameters=mean:16384;gamma:1.5)
set $nthreads=100
set $iosize=1m
set $meanappendsize=16k
set $runtime=10

define fileset name=bigfileset, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc=100, readonly
define fileset name=logfiles, path=$dir, size=$filesize, entries=1,
    dirwidth=$meandirwidth, prealloc

define process name=filereader, instances=1
{
  thread name=filereaderthread, memsize=10m, instances=$nthreads
  {
    flowop openfile      name=openfile1, filesetname=bigfileset, fd=1
    flowop readwholefile name=readfile1, fd=1, iosize=$iosize
    flowop closefile     name=closefile1, fd=1
    flowop openfile      name=openfile2, filesetname=bigfileset, fd=1
    flowop readwholefile name=readfile2, fd=1, iosize=$iosize
    flowop closefile     name=closefile2, fd=1
    flowop openfile      name=openfile3, filesetname=bigfileset, fd=1
    flowop readwholefile name=readfile3, fd=1, iosize=$iosize
    flowop closefile     name=closefile3, fd=1
    flowop openfile      name=openfile4, filesetname=bigfileset, fd=1
    flowop readwholefile name=readfile4, fd=1, iosize=$iosize
    flowop closefile     name=closefile4, fd=1
    flowop openfile      name=openfile5, filesetname=bigfileset, fd=1
    flowop readwholefile name=readfile5, fd=1, iosize=$iosize
    flowop closefile     name=closefile5, fd=1
    flowop openfile      name=openfile6, filesetname=bigfileset, fd=1
    flowop readwholefile name=readfile6, fd=1, iosize=$iosize
    flowop closefile     name=closefile6, fd=1
    flowop openfile      name=openfile7, filesetname=bigfileset, fd=1
    flowop readwholefile name=readfile7, fd=1, iosize=$iosize
    flowop closefile     name=closefile7, fd=1
    flowop openfile      name=openfile8, filesetname=bigfileset, fd=1
    flowop readwholefile name=readfile8, fd=1, iosize=$iosize
    flowop closefile     name=closefile8, fd=1
    flowop openfile      name=openfile9, filesetname=bigfileset, fd=1
    flowop readwholefile name=readfile9, fd=1, iosize=$iosize
    flowop closefile     name=closefile9, fd=1
    flowop openfile      name=openfile10, filesetname=bigfileset, fd=1
    flowop readwholefile name=readfile10, fd=1, iosize=$iosize
    flowop closefile     name=closefile10, fd=1
    flowop appendfilerand name=appendlog, filesetname=logfiles, iosize=$meanappendsize, fd=2
  }
}

run $runtime
