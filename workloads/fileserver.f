# fsbench: fileserver - file server: whole-file create, write, append, read, delete and stat in a shared tree
#
# A busy file server. $nthreads threads share one directory tree of $nfiles
# files (about $meandirwidth entries per directory); 80% of the files exist
# before the run starts. Every thread repeats the same cycle:
#   create a new file and write it whole in $iosize chunks, close it;
#   open an existing file and append a random amount to it, close it;
#   open an existing file and read it whole in $iosize chunks, close it;
#   delete a file; stat a file.
# File sizes are drawn once per file from a gamma distribution (mean 128 KiB,
# shape 1.5). Each append writes between 1 byte and $meanappendsize - 1 bytes,
# so about half of $meanappendsize on average.
#
# Scale with -s: nfiles, meandirwidth, filesize, nthreads, iosize,
# meanappendsize, runtime. fsbench replaces $dir with its run directory.

set $dir=/tmp
set $nfiles=10000
set $meandirwidth=20
set $filesize=cvar(type=cvar-gamma,parameters=mean:131072;gamma:1.5)
set $nthreads=50
set $iosize=1m
set $meanappendsize=16k
set $runtime=10

define fileset name=bigfileset, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc=80

define process name=filereader, instances=1
{
  thread name=filereaderthread, memsize=10m, instances=$nthreads
  {
    flowop createfile     name=createfile1, filesetname=bigfileset, fd=1
    flowop writewholefile name=wrtfile1, srcfd=1, fd=1, iosize=$iosize
    flowop closefile      name=closefile1, fd=1
    flowop openfile       name=openfile1, filesetname=bigfileset, fd=1
    flowop appendfilerand name=appendfilerand1, iosize=$meanappendsize, fd=1
    flowop closefile      name=closefile2, fd=1
    flowop openfile       name=openfile2, filesetname=bigfileset, fd=1
    flowop readwholefile  name=readfile1, fd=1, iosize=$iosize
    flowop closefile      name=closefile3, fd=1
    flowop deletefile     name=deletefile1, filesetname=bigfileset
    flowop statfile       name=statfile1, filesetname=bigfileset
  }
}

run $runtime
