function f1(n) {
  let x = 1;
  let i = 0;
  while (i < n) {
    let j = 0;
    while (j <= i) {
      j = j + 1;
      x = x + (i & j);
    }
    i = i + 1;
  }
  return x;
}
const n = process.argv.length > 2 ? Number(process.argv[2]) : 2117;
const reps = process.argv.length > 3 ? Number(process.argv[3]) : 1000;
let total = 0;
for (let r = 0; r < reps; r++) total = total + f1(n);
console.log(String(total));
