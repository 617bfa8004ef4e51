let n = process.argv.length > 2 ? Number(process.argv[2]) : 90000000;
const m = 99999989;
let a = 0;
let b = 1;
while (n > 0) {
  const t = (a + b) % m;
  a = b;
  b = t;
  n = n - 1;
}
console.log(String(a));
