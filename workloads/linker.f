# fsbench: linker - a linker's reads: hundreds of small files, a few small non-sequential reads each, computation between
#
# From the deceptive-idleness study's linker workload: one process opens each
# of $nfiles object files in turn (a file picked from the fileset), makes
# $nreads reads of $iosize at random offsets within it, closes it, then
# computes ($hogiters iterations of CPU work) before the next file. Read-ahead
# is off for these files, as it is of little use to such reads.
#
# Scale with -s: nfiles, filesize, iosize, nreads, hogiters, nthreads,
# runtime. fsbench replaces $dir with its run directory.

set $dir=/tmp
set $nfiles=500
set $meandirwidth=100
set $filesize=32k
set $iosize=2k
set $nreads=4
set $hogiters=20000
set $nthreads=1
set $runtime=10

define fileset name=objects, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc, readonly

define process name=linker, instances=1
{
  thread name=linker, memsize=1m, instances=$nthreads
  {
    flowop openfile  name=open-object, filesetname=objects, fd=1, noreadahead
    flowop read      name=read-object, fd=1, iosize=$iosize, random,
        iters=$nreads
    flowop closefile name=close-object, fd=1
    flowop hog       name=resolve-symbols, value=$hogiters
  }
}

run $runtime
