pub struct Vm {
    code: Vec<u8>,
    pc: usize,
    stack: Vec<i64>,
    name: String,
}
impl Vm {
    #[allow(dead_code)]
    fn top(&self) -> Option<i64> {
        self.stack.last().copied()
    }
    pub fn run(&mut self) -> Result<i64, u8> {
        let self_ = self;
        {
            let mut __self_cells_value = __Vm_run_cells { pc: self_.pc };
            let __self_cells = &mut __self_cells_value;
            let __self_pc_at_entry = self_.pc;
            let __self_code = &self_.code;
            #[allow(unused_mut)]
            let mut __self_stack = ::core::mem::take(&mut self_.stack);
            let __self_stack_home = &mut self_.stack;
            let __jit_r = __Vm_run(
                __self_cells,
                __self_pc_at_entry,
                __self_code,
                __self_stack,
                __self_stack_home,
            );
            self_.pc = __self_cells_value.pc;
            __jit_r
        }
    }
}
///The scalar fields of `Vm` while `run` runs (see `jitgen`'s split of `self`).
#[doc(hidden)]
#[virtualizable]
#[allow(non_camel_case_types)]
pub struct __Vm_run_cells {
    pub pc: usize,
}
#[doc(hidden)]
#[allow(non_snake_case, unreachable_code, unused_parens, unused_braces)]
pub fn __Vm_run(
    __self_cells: &mut __Vm_run_cells,
    __self_pc_at_entry: usize,
    __self_code: &Vec<u8>,
    mut __self_stack: Vec<i64>,
    __self_stack_home: &mut Vec<i64>,
) -> Result<i64, u8> {
    #[allow(unused_mut, unused_variables)]
    let mut __self_pc = __self_pc_at_entry;
    let __self_code = hint!(__self_code, concrete);
    let __jit_r = {
        loop {
            hint!(global_merge_point);
            let op = hint!((* __self_code) [__self_pc], concrete);
            {
                __self_pc += 1;
                __self_cells.pc = __self_pc;
            };
            if op == 0 {
                return {
                    let __jit_r: Result<i64, u8> = { __self_stack.last().copied() }
                        .ok_or(1);
                    {
                        while let Some(__jit_x) = __self_stack.pop() {
                            __self_stack_home.push(__jit_x);
                        }
                        ::jitgen::__private::give_back_order(__self_stack_home);
                    }
                    __jit_r
                };
            }
            let x = match __self_stack.pop().ok_or(2) {
                Ok(__jit_v) => __jit_v,
                Err(__jit_e) => {
                    {
                        while let Some(__jit_x) = __self_stack.pop() {
                            __self_stack_home.push(__jit_x);
                        }
                        ::jitgen::__private::give_back_order(__self_stack_home);
                    }
                    return Err(::core::convert::From::from(__jit_e));
                }
            };
            __self_stack.push(x + 1);
        }
    };
    {
        while let Some(__jit_x) = __self_stack.pop() {
            __self_stack_home.push(__jit_x);
        }
        ::jitgen::__private::give_back_order(__self_stack_home);
    }
    __jit_r
}
