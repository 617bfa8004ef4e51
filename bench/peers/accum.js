class Count {
  constructor() { this.value = 0; }
  accumulate(x) { this.value = this.value + 1; }
}
class Add {
  constructor() { this.value = 0; }
  accumulate(x) { this.value = this.value + x; }
}
let n = process.argv.length > 2 ? Number(process.argv[2]) : 100000000;
let obj;
if (n < 0) { obj = new Count(); n = -n; } else { obj = new Add(); }
while (n > 0) {
  obj.accumulate(n);
  n = n - 1;
}
console.log(String(obj.value));
