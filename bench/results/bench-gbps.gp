set terminal svg size 1000,600 dynamic noenhanced background rgb 'white'
set output 'bench/results/bench-gbps.svg'
set title 'zvmm bench: clearing rate against extent size (warm memory, median and min-max)'
set logscale x 2
set grid
set key outside right
set xlabel 'extent (kernel rows: page size)'
set ylabel 'GB/s'
set xtics ('4K' 4096, '64K' 65536, '2M' 2097152, '8M' 8388608, '32M' 33554432, '1G' 1073741824)
set xrange [2048:2147483648]
set yrange [0:*]
plot \
  'bench/results/bench-gbps.dat' index 0 using 1:2:3:4 with yerrorlines title 'kernel:demand', \
  'bench/results/bench-gbps.dat' index 1 using 1:2:3:4 with yerrorlines title 'kernel:populate', \
  'bench/results/bench-gbps.dat' index 2 using 1:2:3:4 with yerrorlines title 'pool:prezero', \
  'bench/results/bench-gbps.dat' index 3 using 1:2:3:4 with yerrorlines title 'pool:demand', \
  'bench/results/bench-gbps.dat' index 4 using 1:2:3:4 with yerrorlines title 'pool:populate', \
  'bench/results/bench-gbps.dat' index 5 using 1:2:3:4 with yerrorlines title 'backend:rep_stosb', \
  'bench/results/bench-gbps.dat' index 6 using 1:2:3:4 with yerrorlines title 'backend:rep_stosq', \
  'bench/results/bench-gbps.dat' index 7 using 1:2:3:4 with yerrorlines title 'backend:movq', \
  'bench/results/bench-gbps.dat' index 8 using 1:2:3:4 with yerrorlines title 'backend:movnti', \
  'bench/results/bench-gbps.dat' index 9 using 1:2:3:4 with yerrorlines title 'backend:nt_sse2', \
  'bench/results/bench-gbps.dat' index 10 using 1:2:3:4 with yerrorlines title 'backend:nt_avx2', \
  'bench/results/bench-gbps.dat' index 11 using 1:2:3:4 with yerrorlines title 'backend:nt_avx512', \
  'bench/results/bench-gbps.dat' index 12 using 1:2:3:4 with yerrorlines title 'backend:clzero', \
  'bench/results/bench-gbps.dat' index 13 using 1:2:3:4 with yerrorlines title 'backend:memset', \
  'bench/results/bench-gbps.dat' index 14 using 1:2:3:4 with yerrorlines title 'backend:page_at_a_time', \
  'bench/results/bench-gbps.dat' index 15 using 1:2:3:4 with yerrorlines title 'limit:write'
