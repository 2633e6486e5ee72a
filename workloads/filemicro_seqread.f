# fsbench: filemicro_seqread - sequential 1 MiB reads of a 1 GiB file
#
# One file of $filesize bytes (kept if it already exists). A thread reads it
# sequentially in $iosize chunks, starting again at the beginning at the end
# of the file, for $runtime seconds.
# Filebench's file asked for a cold cache after layout with cached=false,
# which Filebench 1.5 no longer accepts; it is left out here. For a
# cold-cache run drop the page cache between layout and run yourself.
#
# Scale with -s: filesize, iosize, nthreads, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $filesize=1g
set $iosize=1m
set $nthreads=1
set $runtime=10

define file name=largefile, path=$dir, size=$filesize, prealloc, reuse

define process name=filereader, instances=1
{
  thread name=filereaderthread, memsize=10m, instances=$nthreads
  {
    flowop read name=seqread-file, filename=largefile, iosize=$iosize
  }
}

run $runtime
