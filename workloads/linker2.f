# fsbench: linker2 - two linkers at once, each on its own tree of object files
#
# From the deceptive-idleness study's linker workload, its two-instance case: two
# processes, each the `linker` workload on its own fileset (disjoint trees), so that
# a scheduler that idles can keep serving one linker's small non-sequential reads
# while the other computes. Compare with `linker` at the same variables: the study
# found two instances took 5.5 times one without idling, not twice. Each process's
# share of the bytes and its MB/s are in the results (`processes`).
#
# Each process opens each object file in turn (a file picked from its fileset),
# makes $nreads reads of $iosize at random offsets within it, closes it, then
# computes ($hogiters iterations of CPU work) before the next file. Read-ahead is
# off for these files, as in `linker`.
#
# Scale with -s: nfiles (per linker), filesize, iosize, nreads, hogiters, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $nfiles=500
set $meandirwidth=100
set $filesize=32k
set $iosize=2k
set $nreads=4
set $hogiters=20000
set $runtime=10

define fileset name=objects1, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc, readonly
define fileset name=objects2, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc, readonly

define process name=linker1, instances=1
{
  thread name=linker1, memsize=1m, instances=1
  {
    flowop openfile  name=open-object1, filesetname=objects1, fd=1, noreadahead
    flowop read      name=read-object1, fd=1, iosize=$iosize, random,
        iters=$nreads
    flowop closefile name=close-object1, fd=1
    flowop hog       name=resolve-symbols1, value=$hogiters
  }
}

define process name=linker2, instances=1
{
  thread name=linker2, memsize=1m, instances=1
  {
    flowop openfile  name=open-object2, filesetname=objects2, fd=1, noreadahead
    flowop read      name=read-object2, fd=1, iosize=$iosize, random,
        iters=$nreads
    flowop closefile name=close-object2, fd=1
    flowop hog       name=resolve-symbols2, value=$hogiters
  }
}

run $runtime
