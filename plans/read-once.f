# fsbench: read-once - lay out files, then read each one once, whole and in order
#
# For the aging plan: the files are laid out by the run itself, so on an aged file system
# they land in its fragmented free space; `fsbench run --cold` then drops the page cache and
# every byte read comes from the disk, each file exactly once (openfile picks existing
# entries round-robin, and the run ends after $nfiles whole-file reads).
#
# Scale with -s: nfiles, filesize, dirwidth (files per directory, exactly: dirgamma=0),
# iosize. fsbench replaces $dir with its run directory.

set $dir=/tmp
set $nfiles=48
set $filesize=4m
set $iosize=1m
set $dirwidth=25

define fileset name=files,path=$dir,entries=$nfiles,dirwidth=$dirwidth,dirgamma=0,filesize=$filesize,prealloc=100

define process name=reader {
  thread name=reader {
    flowop openfile name=open1,filesetname=files,fd=1
    flowop readwholefile name=read1,fd=1,iosize=$iosize
    flowop closefile name=close1,fd=1
    flowop finishoncount name=done,value=$nfiles,target=read1
  }
}

run 600
