# fsbench: varmail - mail server: small files in one flat directory, create/append/fsync/read/delete
#
# A /var/mail style mail store (think of a Postmark-like load). All $nfiles
# messages live in a single flat directory ($meandirwidth is far larger than
# the file count) and 80% of them exist at start. Each of $nthreads threads
# repeats:
#   delete a message;
#   create a new one, append to it, fsync, close;
#   open a message, read it whole, append to it, fsync, close;
#   open a message, read it whole, close.
# Sizes are gamma distributed (mean 16 KiB, shape 1.5). Appends write 1 byte
# to $meanappendsize - 1 bytes. The fsyncs make this workload sensitive to
# the file system's journal and the device's flush latency.
#
# Scale with -s: nfiles, meandirwidth, filesize, nthreads, iosize,
# meanappendsize, runtime. fsbench replaces $dir with its run directory.

set $dir=/tmp
set $nfiles=1000
set $meandirwidth=1000000
set $filesize=cvar(type=cvar-gamma,parameters=mean:16384;gamma:1.5)
set $nthreads=16
set $iosize=1m
set $meanappendsize=16k
set $runtime=10

define fileset name=bigfileset, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc=80

define process name=filereader, instances=1
{
  thread name=filereaderthread, memsize=10m, instances=$nthreads
  {
    flowop deletefile     name=deletefile1, filesetname=bigfileset
    flowop createfile     name=createfile2, filesetname=bigfileset, fd=1
    flowop appendfilerand name=appendfilerand2, iosize=$meanappendsize, fd=1
    flowop fsync          name=fsyncfile2, fd=1
    flowop closefile      name=closefile2, fd=1
    flowop openfile       name=openfile3, filesetname=bigfileset, fd=1
    flowop readwholefile  name=readfile3, fd=1, iosize=$iosize
    flowop appendfilerand name=appendfilerand3, iosize=$meanappendsize, fd=1
    flowop fsync          name=fsyncfile3, fd=1
    flowop closefile      name=closefile3, fd=1
    flowop openfile       name=openfile4, filesetname=bigfileset, fd=1
    flowop readwholefile  name=readfile4, fd=1, iosize=$iosize
    flowop closefile      name=closefile4, fd=1
  }
}

run $runtime
