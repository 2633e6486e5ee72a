# fsbench: seq-write - the create/write phase of the aging study's sequential I/O benchmark
#
# Creates $nfiles files of $filesize, $dirwidth to a directory (exactly: dirgamma=0), each
# written whole in $iosize requests, synced and closed, then ends: the time to put a data
# set on the disk, file by file. The fsync makes the data reach the disk inside the
# measurement (the page cache would otherwise absorb a 32 MB set on any machine).
#
# Scale with -s: nfiles, filesize, dirwidth, iosize. fsbench replaces $dir with its run
# directory.

set $dir=/tmp
set $nfiles=32
set $filesize=1m
set $dirwidth=25
set $iosize=1m

define fileset name=files,path=$dir,entries=$nfiles,dirwidth=$dirwidth,dirgamma=0,filesize=$filesize,prealloc=0

define process name=writer {
  thread name=writer {
    flowop createfile name=create1,filesetname=files,fd=1
    flowop writewholefile name=write1,fd=1,iosize=$iosize
    flowop fsync name=fsync1,fd=1
    flowop closefile name=close1,fd=1
    flowop finishoncount name=done,value=$nfiles,target=write1
  }
}

run 600
