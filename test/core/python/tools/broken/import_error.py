import module_that_does_not_exist_anywhere

class Tools:
    pass
