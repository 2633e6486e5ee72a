# fsbench: filemicro_delete - unlink throughput: many threads deleting files of a populated tree
#
# bigfileset holds $nfiles files of $filesize bytes (about $meandirwidth per
# directory), all laid out in parallel before the run. Each of $nthreads
# threads deletes files. The run ends once $count files have been deleted
# over all threads (or when the files run out, or after $runtime seconds). The opslimit only throttles if an eventgen rate is set, which
# this workload does not do.
#
# Scale with -s: count, filesize, nfiles, meandirwidth, nthreads, runtime.
# fsbench replaces $dir with its run directory.

set $dir=/tmp
set $count=1000
set $filesize=16k
set $nfiles=5000
set $meandirwidth=100
set $nthreads=16
set $runtime=60

set mode quit firstdone

define fileset name=bigfileset, path=$dir, size=$filesize, entries=$nfiles,
    dirwidth=$meandirwidth, prealloc=100, paralloc

define process name=filedelete, instances=1
{
  thread name=filedeletethread, memsize=10m, instances=$nthreads
  {
    flowop deletefile    name=deletefile1, filesetname=bigfileset
    flowop opslimit      name=limit
    flowop finishoncount name=finish, value=$count
  }
}

run $runtime
