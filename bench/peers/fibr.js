function fib(n) {
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}
const n = process.argv.length > 2 ? Number(process.argv[2]) : 30;
console.log(String(fib(n)));
