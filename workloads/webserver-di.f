# fsbench: webserver-di - web server of the deceptive-idleness study: clients reading random whole files of a long-tailed tree, by read or mmap
#
# From the deceptive-idleness study of disk schedulers (Iyer and Druschel, SOSP 2001):
# a web server serving 48 clients from a trace whose files averaged 34 KB with a long
# tail (95% of the files in 238 MB, 99% in 814 MB). Each of $nthreads client threads
# picks a file uniformly at random (`indexed` by a uniform random variable: Filebench's
# plain pick would take the files in turn), opens it, reads it whole in $iosize requests
# by read(2), or through a memory map with -s usemmap=true, and closes it. The study
# found idling raised the throughput 56% by mmap and 16% by read.
#
# File sizes: a table in three bands, uniform within each, chosen so that the default
# 50,000 files match the published figures (sizes in KiB):
#   95% of the files  1 -    9 KiB, mean    5 KiB: 47,500 files,  232 MiB (published: 238 MB)
#    4%             100 -  480 KiB, mean  290 KiB:  2,000 files, +566 MiB: 99% of the files
#                                                                 in 798 MiB (published: 814 MB)
#    1%             530 - 3000 KiB, mean 1765 KiB:    500 files, +862 MiB
# mean 0.95 x 5 + 0.04 x 290 + 0.01 x 1765 = 34 KiB; the tree holds 1.6 GiB. With fewer
# files (-s nfiles=N) the bands keep their shares and the tree shrinks in proportion:
# what matters is that it exceeds what the run may cache (run it with a memory limit, as
# plans/deceptive-idleness.toml does), so that most reads go to the disk.
#
# Scale with -s: nfiles, nthreads, iosize, usemmap, runtime. fsbench replaces $dir with its
# run directory.

set $dir=/tmp
set $nfiles=50000
set $meandirwidth=100
set $nthreads=48
set $iosize=64k
set $usemmap=false
set $runtime=10

set $filesize=randvar(type=tabular, min=1k, round=1k, randtable=
  {{95,    1k,    9k},
   { 4,  100k,  480k},
   { 1,  530k, 3000k}})

# Which file a client picks: uniform over a range far larger than the fileset, reduced
# modulo its size (as Filebench reduces an index), so every file is as likely.
set $fileidx=randvar(type=uniform, min=0, mean=1000000000)

define fileset name=docs, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc, readonly, reuse

define process name=httpd, instances=1
{
  thread name=client, memsize=1m, instances=$nthreads
  {
    flowop openfile      name=open-doc, filesetname=docs, indexed=$fileidx, fd=1
    flowop readwholefile name=read-doc, fd=1, iosize=$iosize, mmap=$usemmap
    flowop closefile     name=close-doc, fd=1
  }
}

run $runtime
