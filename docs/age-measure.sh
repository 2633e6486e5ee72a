#!/bin/sh
# Fresh vs aged ext4: layout score and sequential read throughput of the same files.
set -e
B=${FSBENCH:-fsbench}
# Run as root in a scratch directory (it makes two image files there).
SIZE=${SIZE:-256M}; OPS=${OPS:-50000}
for n in aged fresh; do
  truncate -s $SIZE $n.img; mkfs.ext4 -q -F -b 4096 $n.img
  mkdir -p $n; mount -o loop $n.img $n
done
$B age aged --fill 0.85 --seed 1 --ops $OPS -q --json age.json > age.txt
# The same files, copied in name order onto the fresh file system.
(cd aged && find fsbench-aged -type f | sort) > files.txt
(cd aged && tar cf - -T ../files.txt) | (cd fresh && tar xf -)
sync
for n in aged fresh; do
  $B layout $n/fsbench-aged --sync --json $n-layout.json > /dev/null
  echo 3 > /proc/sys/vm/drop_caches
  bytes=$(cd $n && xargs -a ../files.txt cat | wc -c)
  echo 3 > /proc/sys/vm/drop_caches
  s=$(date +%s.%N); (cd $n && xargs -a ../files.txt cat > /dev/null); e=$(date +%s.%N)
  python3 -c "import json;r=json.load(open('$n-layout.json'));print('$n', 'score %.4f'%r['score'], 'files', r['files'], 'fragments', r['fragments'], 'read %.1f MB/s'%($bytes/1e6/($e-$s)), '%.2fs'%($e-$s))"
done
for n in aged fresh; do umount $n; rm -f $n.img; done
