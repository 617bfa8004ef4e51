const n = process.argv.length > 2 ? Number(process.argv[2]) : 90000000;
const m = 99999989;
let f = 1;
let i = 1;
while (i <= n) {
  f = (f * i) % m;
  i = i + 1;
}
console.log(String(f));
